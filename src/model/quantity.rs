//! Kubernetes resource quantities (`500m`, `2Gi`, `1.5`, `12e3`, `1E`, `1e30`), held
//! exactly, together with the form apimachinery's `ParseQuantity` keeps them in: below
//! int64 a quantity reads the same in any form, beyond it `Value()` and `MilliValue()`
//! overflow differently per form (to 0, or to the low 64 bits), and the scheduler reads
//! exactly those numbers.

use std::cmp::Ordering;
use std::fmt;

/// A quantity: the exact value `mantissa · 10^exponent` (the mantissa without trailing
/// zeros; zero has exponent 0) and apimachinery's form of it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Quantity {
    mantissa: i128,
    exponent: i64,
    form: Form,
}

/// apimachinery's representation: an `int64Amount` or an `inf.Dec` of some scale.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Form {
    /// `value · 10^scale`.
    Int { value: i64, scale: i32 },
    /// An `inf.Dec` of this scale (its unscaled integer is the value · 10^scale).
    Dec { scale: i32 },
}

impl Default for Form {
    fn default() -> Self {
        Form::Int { value: 0, scale: 0 }
    }
}

/// Why a quantity string was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// Not a quantity.
    #[error("invalid quantity {input:?}")]
    Invalid {
        /// The text as given.
        input: String,
    },
    /// Valid for the API server, but beyond what is held exactly here.
    #[error("quantity {input:?} is beyond the supported precision")]
    Unsupported {
        /// The text as given.
        input: String,
    },
}

/// The scales `ScaledValue` is read at: whole units (`Value`) and thousandths
/// (`MilliValue`), as powers of ten.
const UNITS: i32 = 0;
const MILLIS: i32 = -3;
/// apimachinery keeps at most 18 digits in an `int64Amount` (`maxInt64Factors`).
const MAX_INT64_FACTORS: i64 = 18;
/// Every non-zero `inf.Dec` is rounded up to nano-units when parsed.
const NANO: i32 = -9;
/// Most significant digits held: the mantissa stays an i128 with room to add.
const MAX_DIGITS: usize = 36;

impl Quantity {
    /// Zero.
    pub const ZERO: Quantity = Quantity {
        mantissa: 0,
        exponent: 0,
        form: Form::Int { value: 0, scale: 0 },
    };

    /// `units` whole units, as upstream's `NewQuantity`.
    pub fn from_units(units: i64) -> Self {
        Self::int(units, 0)
    }

    /// `millis` thousandths, as upstream's `NewMilliQuantity`.
    pub fn from_millis(millis: i64) -> Self {
        Self::int(millis, MILLIS)
    }

    fn int(value: i64, scale: i32) -> Self {
        let (mantissa, exponent) = normalized(i128::from(value), i64::from(scale));
        Quantity {
            mantissa,
            exponent,
            form: Form::Int { value, scale },
        }
    }

    /// Parses the Kubernetes quantity grammar: an optional sign, a decimal number
    /// (`1`, `1.5`, `.5`, `5.`), then one suffix: binary SI (`Ki`..`Ei`), decimal SI
    /// (`n`, `u`, `m`, ``, `k`, `M`, `G`, `T`, `P`, `E`) or a decimal exponent (`e3`, `E-2`,
    /// read as an int64 then cut to an int32 as upstream does). The form follows upstream's
    /// `ParseQuantity`: up to 18 digits at a scale of at least nano-units are an int64
    /// amount, the rest a decimal rounded up to nano-units (binary ones capped at 2^63-1).
    pub fn parse(input: &str) -> Result<Self, QuantityError> {
        let invalid = || QuantityError::Invalid {
            input: input.to_string(),
        };
        let unsupported = || QuantityError::Unsupported {
            input: input.to_string(),
        };
        if input.is_empty() || input.trim() != input {
            return Err(invalid());
        }
        if input == "0" {
            return Ok(Quantity::ZERO);
        }
        let bytes = input.as_bytes();
        let (negative, mut pos) = match bytes[0] {
            b'+' => (false, 1),
            b'-' => (true, 1),
            _ => (false, 0),
        };
        let int_start = pos;
        while pos < bytes.len() && bytes[pos].is_ascii_digit() {
            pos += 1;
        }
        let int_digits = &bytes[int_start..pos];
        let mut frac_digits: &[u8] = &[];
        if pos < bytes.len() && bytes[pos] == b'.' {
            pos += 1;
            let frac_start = pos;
            while pos < bytes.len() && bytes[pos].is_ascii_digit() {
                pos += 1;
            }
            frac_digits = &bytes[frac_start..pos];
        }
        if int_digits.is_empty() && frac_digits.is_empty() {
            return Err(invalid());
        }
        let suffix = Suffix::parse(&input[pos..]).ok_or_else(invalid)?;
        // Upstream's digit counts: the integer part without leading zeros ("0" when none
        // is left), the fraction with all its digits.
        let num_len = int_digits.iter().skip_while(|&&d| d == b'0').count().max(1) as i64;
        let denom_len = frac_digits.len() as i64;
        let digits = || int_digits.iter().chain(frac_digits);

        let int_amount = match suffix {
            Suffix::Decimal(exponent) => {
                let scale = i64::from(exponent) - denom_len;
                if MAX_INT64_FACTORS - (num_len + denom_len) >= 0 && scale >= i64::from(NANO) {
                    small_integer(digits()).map(|value| (value, scale as i32))
                } else {
                    None
                }
            }
            Suffix::Binary(exponent) => {
                let precision = 15 - num_len - i64::from(exponent) * 3 / 10 - 1;
                (denom_len == 0 && precision >= 0)
                    .then(|| small_integer(digits())?.checked_mul(1i64 << exponent))
                    .flatten()
                    .map(|value| (value, 0))
            }
        };
        if let Some((value, scale)) = int_amount {
            return Ok(Self::int(if negative { -value } else { value }, scale));
        }

        // The decimal path: the digits as mantissa · 10^trailing_zeros.
        let (mantissa, trailing_zeros) = significant(digits()).ok_or_else(unsupported)?;
        let (mantissa, exponent) = match suffix {
            Suffix::Decimal(exponent) => {
                let exponent = trailing_zeros + i64::from(exponent) - denom_len;
                round_up_to_nanos(mantissa, exponent)
            }
            Suffix::Binary(exponent) => {
                let scaled = mantissa.checked_mul(1i128 << exponent);
                let nanos = match scaled {
                    Some(scaled) => {
                        scale_up_ceil(scaled, trailing_zeros - denom_len - i64::from(NANO))
                    }
                    None if trailing_zeros >= denom_len => None,
                    None => return Err(unsupported()),
                };
                // Above 2^63-1 units (any overflow here is above 10^29) upstream caps.
                let cap = i128::from(i64::MAX) * 1_000_000_000;
                match nanos {
                    Some(nanos) if nanos <= cap => (nanos, i64::from(NANO)),
                    _ => (i128::from(i64::MAX), 0),
                }
            }
        };
        let scale = if mantissa == 0 {
            // A zero is not rounded: it keeps the scale of its digits.
            let exponent = match suffix {
                Suffix::Decimal(exponent) => i64::from(exponent),
                Suffix::Binary(_) => 0,
            };
            i32::try_from(denom_len - exponent).map_err(|_| unsupported())?
        } else {
            -NANO
        };
        let (mantissa, exponent) = normalized(mantissa, exponent);
        Ok(Quantity {
            mantissa: if negative { -mantissa } else { mantissa },
            exponent,
            form: Form::Dec { scale },
        })
    }

    /// Below zero.
    pub fn is_negative(self) -> bool {
        self.mantissa < 0
    }

    /// Exactly zero.
    pub fn is_zero(self) -> bool {
        self.mantissa == 0
    }

    /// `self + other` in upstream's `Quantity.Add` form (an int64 amount while it stays
    /// one, else a decimal of the larger scale); `None` when the exact sum is beyond
    /// what is held here.
    pub fn checked_add(self, other: Quantity) -> Option<Quantity> {
        let exponent = self.exponent.min(other.exponent);
        let align = |q: Quantity| q.mantissa.checked_mul(pow10_i128(q.exponent - exponent)?);
        let (mantissa, exponent) = normalized(align(self)?.checked_add(align(other)?)?, exponent);
        let form = match (self.form, other.form) {
            (
                Form::Int {
                    value: a,
                    scale: sa,
                },
                Form::Int {
                    value: b,
                    scale: sb,
                },
            ) => match int64_amount_add((a, sa), (b, sb)) {
                Some((value, scale)) => Form::Int { value, scale },
                None => Form::Dec {
                    scale: (-sa).max(-sb),
                },
            },
            (a, b) => Form::Dec {
                scale: a.dec_scale().max(b.dec_scale()),
            },
        };
        Some(Quantity {
            mantissa,
            exponent,
            form,
        })
    }

    /// Compares the values (not the forms), as upstream's `Quantity.Cmp`.
    pub fn cmp_value(self, other: Quantity) -> Ordering {
        let sign = |q: Quantity| q.mantissa.signum();
        match sign(self).cmp(&sign(other)) {
            Ordering::Equal if self.mantissa == 0 => return Ordering::Equal,
            Ordering::Equal => {}
            unequal => return unequal,
        }
        let magnitude = |q: Quantity| digit_count(q.mantissa.unsigned_abs()) + q.exponent;
        let by_magnitude = magnitude(self).cmp(&magnitude(other));
        let by_magnitude = if self.mantissa < 0 {
            by_magnitude.reverse()
        } else {
            by_magnitude
        };
        if by_magnitude != Ordering::Equal {
            return by_magnitude;
        }
        // Equal magnitudes: aligned, both have the digits of the longer mantissa.
        let exponent = self.exponent.min(other.exponent);
        let align = |q: Quantity| {
            q.mantissa
                .saturating_mul(pow10_i128(q.exponent - exponent).unwrap_or(i128::MAX))
        };
        align(self).cmp(&align(other))
    }

    /// Upstream `MilliValue`: the value in thousandths rounded up, overflowing as
    /// apimachinery's form of the quantity overflows.
    pub fn milli_value(self) -> i64 {
        self.scaled_value(MILLIS)
    }

    /// Upstream `Value`: the value in whole units rounded up, overflowing as above.
    pub fn value(self) -> i64 {
        self.scaled_value(UNITS)
    }

    /// Upstream `ScaledValue(scale)`: ceil(value / 10^scale) for an amount that fits,
    /// else what apimachinery's arithmetic on the form leaves.
    fn scaled_value(self, scale: i32) -> i64 {
        match self.form {
            Form::Int { value, scale: own } => {
                if own < scale {
                    // `negativeScaleInt64`: divides, rounding away from zero.
                    return match 10i64.checked_pow((i64::from(scale) - i64::from(own)) as u32) {
                        Some(divisor) => {
                            value / divisor + i64::from(value % divisor != 0) * value.signum()
                        }
                        None => value.signum(),
                    };
                }
                // `positiveScaleInt64`, with the shift computed in int32 as upstream does
                // (a wrapped, negative shift multiplies by nothing). These factors
                // multiply in one step and keep the wrapped product; the others step by
                // ten and give 0 on overflow.
                match own.wrapping_sub(scale) {
                    ..=0 => value,
                    1 | 2 | 3 | 6 | 9 if value == i64::MIN => 0,
                    shift @ (1 | 2 | 3 | 6 | 9) => value.wrapping_mul(10i64.pow(shift as u32)),
                    shift => 10i64
                        .checked_pow(shift as u32)
                        .and_then(|factor| value.checked_mul(factor))
                        .unwrap_or(0),
                }
            }
            Form::Dec { scale: own } => {
                // `scaledValue` on the unscaled integer u = value · 10^own.
                let shift = i64::from(own) + i64::from(scale);
                match shift {
                    // Exact: the low 64 bits of u times 10^-shift, wrapping; beyond 10^18
                    // the factor is a float converted to int64, which x86-64 makes 2^63.
                    ..=0 => {
                        let low = self.low_bits(i64::from(own));
                        if -shift <= 18 {
                            low.wrapping_mul(10i64.pow((-shift) as u32))
                        } else {
                            low.wrapping_mul(i64::MIN)
                        }
                    }
                    // Divides, rounding up, and keeps the low 64 bits of the quotient.
                    _ => {
                        let exponent = self.exponent - i64::from(scale);
                        if exponent >= 0 {
                            self.low_bits(-i64::from(scale))
                        } else {
                            let divisor = pow10_i128(-exponent);
                            let quotient = match divisor {
                                Some(d) => {
                                    self.mantissa.div_euclid(d)
                                        + i128::from(self.mantissa.rem_euclid(d) != 0)
                                }
                                None => i128::from(self.mantissa > 0),
                            };
                            quotient as i64
                        }
                    }
                }
            }
        }
    }

    /// The low 64 bits of the integer value · 10^shift (which must be an integer).
    fn low_bits(self, shift: i64) -> i64 {
        let power = self.exponent + shift;
        (self.mantissa as i64).wrapping_mul(wrapping_pow10(power.max(0) as u64))
    }
}

impl Form {
    /// The scale of this amount as an `inf.Dec` (upstream `AsDec`).
    fn dec_scale(self) -> i32 {
        match self {
            Form::Int { scale, .. } => -scale,
            Form::Dec { scale } => scale,
        }
    }
}

/// A quantity's suffix: a power of ten or (binary SI) of two.
#[derive(Clone, Copy)]
enum Suffix {
    Decimal(i32),
    Binary(u32),
}

impl Suffix {
    fn parse(suffix: &str) -> Option<Self> {
        Some(match suffix {
            "" => Suffix::Decimal(0),
            "n" => Suffix::Decimal(-9),
            "u" => Suffix::Decimal(-6),
            "m" => Suffix::Decimal(-3),
            "k" => Suffix::Decimal(3),
            "M" => Suffix::Decimal(6),
            "G" => Suffix::Decimal(9),
            "T" => Suffix::Decimal(12),
            "P" => Suffix::Decimal(15),
            "E" => Suffix::Decimal(18),
            "Ki" => Suffix::Binary(10),
            "Mi" => Suffix::Binary(20),
            "Gi" => Suffix::Binary(30),
            "Ti" => Suffix::Binary(40),
            "Pi" => Suffix::Binary(50),
            "Ei" => Suffix::Binary(60),
            _ => {
                let rest = suffix.strip_prefix(['e', 'E'])?;
                let digits = rest.strip_prefix(['+', '-']).unwrap_or(rest);
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                // Upstream parses an int64 and keeps its low 32 bits.
                Suffix::Decimal(rest.parse::<i64>().ok()? as i32)
            }
        })
    }
}

/// At most 18 digits as an int64 (upstream's `strconv.ParseInt` of them).
fn small_integer<'a>(digits: impl Iterator<Item = &'a u8>) -> Option<i64> {
    let mut digits = digits;
    digits.try_fold(0i64, |acc, d| {
        acc.checked_mul(10)?.checked_add(i64::from(d - b'0'))
    })
}

/// The digits as (mantissa without trailing zeros, count of trailing zeros); `None`
/// beyond [`MAX_DIGITS`] significant digits. Allocation-free: this runs for every
/// quantity of a bulk load.
fn significant<'a>(digits: impl Iterator<Item = &'a u8>) -> Option<(i128, i64)> {
    let (mut mantissa, mut zeros, mut count) = (0i128, 0i64, 0usize);
    for &digit in digits {
        if digit == b'0' {
            zeros += 1;
            continue;
        }
        if mantissa != 0 {
            count += zeros as usize;
            mantissa = mantissa.checked_mul(pow10_i128(zeros)?)?;
        }
        count += 1;
        if count > MAX_DIGITS {
            return None;
        }
        mantissa = mantissa * 10 + i128::from(digit - b'0');
        zeros = 0;
    }
    Some((mantissa, if mantissa == 0 { 0 } else { zeros }))
}

/// `mantissa · 10^exponent` rounded up to nano-units (a non-negative mantissa).
fn round_up_to_nanos(mantissa: i128, exponent: i64) -> (i128, i64) {
    let nano = i64::from(NANO);
    if exponent >= nano || mantissa == 0 {
        return (mantissa, exponent);
    }
    let rounded = match pow10_i128(nano - exponent) {
        Some(divisor) => mantissa / divisor + i128::from(mantissa % divisor != 0),
        None => 1,
    };
    (rounded, nano)
}

/// ceil(value · 10^power) for a non-negative value; `None` on overflow.
fn scale_up_ceil(value: i128, power: i64) -> Option<i128> {
    if power >= 0 {
        return value.checked_mul(pow10_i128(power)?);
    }
    Some(match pow10_i128(-power) {
        Some(divisor) => value / divisor + i128::from(value % divisor != 0),
        None => i128::from(value != 0),
    })
}

/// The mantissa without trailing zeros and the exponent that keeps the value.
fn normalized(mut mantissa: i128, mut exponent: i64) -> (i128, i64) {
    if mantissa == 0 {
        return (0, 0);
    }
    while mantissa % 10 == 0 {
        mantissa /= 10;
        exponent += 1;
    }
    (mantissa, exponent)
}

/// 10^power as an i128, `None` when it is out of range.
fn pow10_i128(power: i64) -> Option<i128> {
    u32::try_from(power)
        .ok()
        .and_then(|p| 10i128.checked_pow(p))
}

/// 10^power modulo 2^64.
fn wrapping_pow10(power: u64) -> i64 {
    // 10^64 is a multiple of 2^64.
    if power >= 64 {
        0
    } else {
        10i64.wrapping_pow(power as u32)
    }
}

fn digit_count(mut n: u128) -> i64 {
    let mut count = 0;
    while n > 0 {
        n /= 10;
        count += 1;
    }
    count
}

/// Upstream `int64Amount.Add`: the sum as an int64 amount at the smaller scale, or `None`
/// when rescaling or adding overflows.
fn int64_amount_add(a: (i64, i32), b: (i64, i32)) -> Option<(i64, i32)> {
    let rescaled = |value: i64, shift: i32| {
        10i64
            .checked_pow(shift as u32)
            .and_then(|factor| value.checked_mul(factor))
    };
    match (a, b) {
        (a, (0, _)) => Some(a),
        ((0, _), b) => Some(b),
        ((x, sa), (y, sb)) if sa == sb => Some((x.checked_add(y)?, sa)),
        ((x, sa), (y, sb)) if sa > sb => Some((rescaled(x, sa - sb)?.checked_add(y)?, sb)),
        ((x, sa), (y, sb)) => Some((x.checked_add(rescaled(y, sb - sa)?)?, sa)),
    }
}

impl fmt::Display for Quantity {
    /// A re-parseable form that parses back to the same form: int64 amounts as written
    /// (`250m`, `12e3`), decimals with at least 19 digits so they stay decimals.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.form {
            Form::Int { value, scale } => match scale {
                0 => write!(f, "{value}"),
                -3 => write!(f, "{value}m"),
                -6 => write!(f, "{value}u"),
                -9 => write!(f, "{value}n"),
                _ => write!(f, "{value}e{scale}"),
            },
            Form::Dec { scale } if self.mantissa == 0 => {
                write!(f, "0.{}e{}", "0".repeat(18), 18 - i64::from(scale))
            }
            Form::Dec { .. } => {
                let digits = self.mantissa.unsigned_abs().to_string();
                let sign = if self.mantissa < 0 { "-" } else { "" };
                // The `e` suffix holds an int32: an exponent beyond it moves into zeros of
                // the digits (above) or of a fraction (below), which parse back exactly.
                let len = digits.len() as i64;
                let pad = (19 - len).max(self.exponent - i64::from(i32::MAX)).max(0);
                let exponent = self.exponent - pad;
                if exponent < i64::from(i32::MIN) {
                    let lead = i64::from(i32::MIN) - exponent - len;
                    let lead = lead.max(0);
                    let written = exponent + len + lead;
                    return write!(f, "{sign}0.{}{digits}e{written}", "0".repeat(lead as usize));
                }
                write!(f, "{sign}{digits}{}e{exponent}", "0".repeat(pad as usize))
            }
        }
    }
}

#[cfg(test)]
mod tests;
