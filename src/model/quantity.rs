//! Kubernetes resource quantities (`500m`, `2Gi`, `1.5`, `12e3`, `1E`), held exactly in
//! nano-units so sums of container requests are exact before rounding, as upstream's
//! `resource.Quantity` arithmetic is.

use std::fmt;

/// A quantity in units of 10^-9 of its base unit (cores, bytes, ...).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Quantity {
    nanos: i128,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid quantity {input:?}")]
pub struct QuantityError {
    pub input: String,
}

const NANOS_PER_UNIT: i128 = 1_000_000_000;

impl Quantity {
    pub const ZERO: Quantity = Quantity { nanos: 0 };

    pub fn from_units(units: i64) -> Self {
        Quantity {
            nanos: units as i128 * NANOS_PER_UNIT,
        }
    }

    pub fn from_millis(millis: i64) -> Self {
        Quantity {
            nanos: millis as i128 * 1_000_000,
        }
    }

    /// Parses the Kubernetes quantity grammar: an optional sign, a decimal number
    /// (`1`, `1.5`, `.5`, `5.`), then one suffix: binary SI (`Ki`..`Ei`), decimal SI
    /// (`n`, `u`, `m`, ``, `k`, `M`, `G`, `T`, `P`, `E`) or a decimal exponent (`e3`, `E-2`).
    /// Precision below 10^-9 is rounded up, as upstream rounds.
    pub fn parse(input: &str) -> Result<Self, QuantityError> {
        let err = || QuantityError {
            input: input.to_string(),
        };
        let s = input.trim();
        if s.is_empty() || s != input {
            return Err(err());
        }
        let bytes = s.as_bytes();
        let mut pos = 0;
        let negative = match bytes[0] {
            b'+' => {
                pos = 1;
                false
            }
            b'-' => {
                pos = 1;
                true
            }
            _ => false,
        };
        let int_start = pos;
        while pos < bytes.len() && bytes[pos].is_ascii_digit() {
            pos += 1;
        }
        let int_digits = &s[int_start..pos];
        let mut frac_digits = "";
        if pos < bytes.len() && bytes[pos] == b'.' {
            pos += 1;
            let frac_start = pos;
            while pos < bytes.len() && bytes[pos].is_ascii_digit() {
                pos += 1;
            }
            frac_digits = &s[frac_start..pos];
        }
        if int_digits.is_empty() && frac_digits.is_empty() {
            return Err(err());
        }
        let suffix = &s[pos..];
        // (power of ten, power of two) applied to the number.
        let (exp10, exp2): (i32, u32) = match suffix {
            "" => (0, 0),
            "n" => (-9, 0),
            "u" => (-6, 0),
            "m" => (-3, 0),
            "k" => (3, 0),
            "M" => (6, 0),
            "G" => (9, 0),
            "T" => (12, 0),
            "P" => (15, 0),
            "E" => (18, 0),
            "Ki" => (0, 10),
            "Mi" => (0, 20),
            "Gi" => (0, 30),
            "Ti" => (0, 40),
            "Pi" => (0, 50),
            "Ei" => (0, 60),
            _ => {
                let rest = suffix
                    .strip_prefix('e')
                    .or_else(|| suffix.strip_prefix('E'))
                    .ok_or_else(err)?;
                let digits = rest
                    .strip_prefix('+')
                    .or_else(|| rest.strip_prefix('-'))
                    .unwrap_or(rest);
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(err());
                }
                // Upstream reads the exponent as an int64. Beyond ±1000 every non-zero
                // value overflows or rounds up to 1n, so clamping changes no result.
                let exp: i64 = rest.parse().map_err(|_| err())?;
                (exp.clamp(-1000, 1000) as i32, 0)
            }
        };
        // mantissa * 10^(exp10 - frac_len + 9) * 2^exp2 nanos.
        // All the digits as one integer (no allocation: this runs for every quantity of
        // a bulk load); more than 36 significant digits are refused.
        let mut mantissa: i128 = 0;
        let mut significant = 0;
        for digit in int_digits.bytes().chain(frac_digits.bytes()) {
            if significant == 0 && digit == b'0' {
                continue;
            }
            significant += 1;
            if significant > 36 {
                return Err(err());
            }
            mantissa = mantissa * 10 + i128::from(digit - b'0');
        }
        let scale = exp10 - frac_digits.len() as i32 + 9;
        let mut nanos = mantissa.checked_mul(1i128 << exp2).ok_or_else(err)?;
        if scale >= 0 {
            for _ in 0..scale {
                nanos = nanos.checked_mul(10).ok_or_else(err)?;
                if nanos == 0 {
                    break;
                }
            }
        } else {
            let mut remainder = false;
            for _ in 0..(-scale) {
                if nanos == 0 {
                    break;
                }
                remainder |= nanos % 10 != 0;
                nanos /= 10;
            }
            if remainder {
                nanos += 1;
            }
        }
        // Keep every value representable as an int64 count of nano-units' parents.
        if nanos > i64::MAX as i128 * NANOS_PER_UNIT {
            return Err(err());
        }
        Ok(Quantity {
            nanos: if negative { -nanos } else { nanos },
        })
    }

    pub fn is_negative(self) -> bool {
        self.nanos < 0
    }

    pub fn saturating_add(self, other: Quantity) -> Quantity {
        Quantity {
            nanos: self.nanos.saturating_add(other.nanos),
        }
    }

    /// Value in thousandths, rounded up (upstream `MilliValue`).
    pub fn milli_value(self) -> i64 {
        ceil_div(self.nanos, 1_000_000)
    }

    /// Value in whole units, rounded up (upstream `Value`).
    pub fn value(self) -> i64 {
        ceil_div(self.nanos, NANOS_PER_UNIT)
    }
}

fn ceil_div(n: i128, d: i128) -> i64 {
    let q = n.div_euclid(d) + if n.rem_euclid(d) != 0 { 1 } else { 0 };
    q.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

impl fmt::Display for Quantity {
    /// A canonical, re-parseable form: whole units when exact, else nano-units.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.nanos % NANOS_PER_UNIT == 0 {
            write!(f, "{}", self.nanos / NANOS_PER_UNIT)
        } else if self.nanos % 1_000_000 == 0 {
            write!(f, "{}m", self.nanos / 1_000_000)
        } else {
            write!(f, "{}n", self.nanos)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn milli(s: &str) -> i64 {
        Quantity::parse(s).unwrap().milli_value()
    }

    fn units(s: &str) -> i64 {
        Quantity::parse(s).unwrap().value()
    }

    #[test]
    fn decimal_si_suffixes() {
        assert_eq!(milli("500m"), 500);
        assert_eq!(milli("1"), 1000);
        assert_eq!(milli("1.5"), 1500);
        assert_eq!(milli(".5"), 500);
        assert_eq!(milli("5."), 5000);
        assert_eq!(units("1k"), 1000);
        assert_eq!(units("2M"), 2_000_000);
        assert_eq!(units("3G"), 3_000_000_000);
        assert_eq!(units("1T"), 1_000_000_000_000);
        assert_eq!(units("1P"), 1_000_000_000_000_000);
        assert_eq!(units("1E"), 1_000_000_000_000_000_000);
        assert_eq!(milli("100u"), 1);
        assert_eq!(milli("1n"), 1);
        assert_eq!(units("+7"), 7);
    }

    #[test]
    fn binary_si_suffixes() {
        assert_eq!(units("1Ki"), 1024);
        assert_eq!(units("1Mi"), 1 << 20);
        assert_eq!(units("2Gi"), 2 << 30);
        assert_eq!(units("1Ti"), 1 << 40);
        assert_eq!(units("1Pi"), 1 << 50);
        assert_eq!(units("1Ei"), 1 << 60);
        assert_eq!(units("1.5Gi"), 3 << 29);
    }

    #[test]
    fn exponents() {
        assert_eq!(units("12e3"), 12_000);
        assert_eq!(units("1E3"), 1000);
        assert_eq!(units("1e+3"), 1000);
        assert_eq!(milli("5e-1"), 500);
        assert_eq!(milli("1e-3"), 1);
    }

    #[test]
    fn rounding_is_up() {
        assert_eq!(milli("0.0001"), 1);
        assert_eq!(units("0.1"), 1);
        assert_eq!(units("1500m"), 2);
        assert_eq!(milli("1e-12"), 1);
        assert_eq!(milli("1e-2147483647"), 1);
        assert_eq!(milli("0e99999"), 0);
        // Leading zeros are not significant digits; 36 significant digits are the most.
        assert_eq!(milli(&format!("0.{}1", "0".repeat(40))), 1);
        assert_eq!(milli(&format!("0.{}", "9".repeat(36))), 1000);
        assert!(Quantity::parse(&format!("0.{}", "9".repeat(37))).is_err());
    }

    #[test]
    fn rejects_garbage() {
        for bad in [
            "",
            "12x",
            "m",
            "1.2.3",
            " 1",
            "1 ",
            "e3",
            "1e",
            "1Kb",
            "--1",
            "1e3.5",
            "1ki",
            "0x10",
            "1e99",
            "1e2147483647",
            "1e99999999999999999999",
        ] {
            assert!(Quantity::parse(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn display_round_trips() {
        for s in ["500m", "2", "1Gi", "3n", "1.5"] {
            let q = Quantity::parse(s).unwrap();
            assert_eq!(Quantity::parse(&q.to_string()).unwrap(), q);
        }
    }
}
