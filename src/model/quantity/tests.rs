//! Quantity readings, checked against apimachinery's.
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
    assert_eq!(
        Quantity::parse(&format!("0.{}", "9".repeat(37))),
        Err(QuantityError::Unsupported {
            input: format!("0.{}", "9".repeat(37))
        })
    );
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
        "1e99999999999999999999",
    ] {
        assert!(Quantity::parse(bad).is_err(), "{bad:?} should be rejected");
    }
}

/// `Value()` and `MilliValue()` of apimachinery v0.35.4 on these quantities (and on
/// their sums by `Quantity.Add`, written `a+b`), recorded from its Go code: below
/// int64 the rounded-up value, beyond it what each form's overflow leaves.
#[test]
fn readings_are_apimachinerys() {
    let table: &[(&str, i64, i64)] = &[
        ("0", 0, 0),
        ("1", 1, 1000),
        ("500m", 1, 500),
        ("1.5", 2, 1500),
        (".5", 1, 500),
        ("5.", 5, 5000),
        ("1k", 1000, 1000000),
        ("2M", 2000000, 2000000000),
        ("3G", 3000000000, 3000000000000),
        ("1T", 1000000000000, 1000000000000000),
        ("1P", 1000000000000000, 1000000000000000000),
        ("1E", 1000000000000000000, 0),
        ("100u", 1, 1),
        ("1n", 1, 1),
        ("1Ki", 1024, 1024000),
        ("1Mi", 1048576, 1048576000),
        ("2Gi", 2147483648, 2147483648000),
        ("1Ti", 1099511627776, 1099511627776000),
        ("1Pi", 1125899906842624, 1125899906842624000),
        ("1Ei", 1152921504606846976, -9223372036854775808),
        ("7Ei", 8070450532247928832, -9223372036854775808),
        ("8Ei", 9223372036854775807, -1000),
        ("16Ei", 9223372036854775807, -1000),
        ("1.5Gi", 1610612736, 1610612736000),
        ("0.5Ki", 512, 512000),
        ("1.5Ei", 1729382256910270464, -4611686018427387904),
        ("12e3", 12000, 12000000),
        ("1E3", 1000, 1000000),
        ("5e-1", 1, 500),
        ("1e-3", 1, 1),
        ("0.0001", 1, 1),
        ("0.1", 1, 100),
        ("1500m", 2, 1500),
        ("1e-12", 1, 1),
        ("0e99999", 0, 0),
        ("1e30", 0, 0),
        ("1e40", 0, 0),
        ("1.5e30", 0, 0),
        ("1e18", 1000000000000000000, 0),
        ("1e19", 0, 0),
        ("9e18", 9000000000000000000, 0),
        ("10e18", 0, 0),
        ("999999999999999999E", 0, 0),
        ("9E", 9000000000000000000, 0),
        ("10E", 0, 0),
        ("9223372036854775807", 9223372036854775807, -1000),
        ("9223372036854775808", -9223372036854775808, 0),
        (
            "12345678901234567890",
            -6101065172474983726,
            4807115922877858896,
        ),
        ("9223372036854775", 9223372036854775, 9223372036854775000),
        ("9223372036854775m", 9223372036855, 9223372036854775),
        ("9223372036854776", 9223372036854776, -9223372036854775616),
        (
            "9223372036854775807m",
            9223372036854776,
            9223372036854775807,
        ),
        ("0.000000000000000000001", 1, 1),
        ("1e2147483647", 0, 1),
        ("1e4294967296", 1, 1000),
        ("1e4294967297", 10, 10000),
        (
            "1234567890123456789e20",
            -7368572662461759488,
            -8321777051648393216,
        ),
        ("0.0000000000", 0, 0),
        (
            "123456789012345678",
            123456789012345678,
            -5670419503621183312,
        ),
        (
            "1234567890123456789",
            1234567890123456789,
            -1363962815083169272,
        ),
        (
            "9223372036854775.807",
            9223372036854776,
            9223372036854775807,
        ),
        ("1e15", 1000000000000000, 1000000000000000000),
        ("1e16", 10000000000000000, 0),
        ("9.3e15", 9300000000000000, 0),
        ("92233720368547758", 92233720368547758, -80),
        ("8e18", 8000000000000000000, 0),
        ("1e30+1e30", 0, 0),
        ("1e30+5", 5076944270305263621, 4089650035136926600),
        ("1e30+1Gi", 5076944271379005440, 4089651108878745600),
        ("9e18+9e18", 0, 0),
        ("9223372036854775807+9223372036854775807", -2, -2000),
        ("5e18+5e18", 0, 0),
        ("5E+5E", 0, 0),
        ("1Ei+1Ei", 2305843009213693952, 0),
        ("1e40+1e19", -9223372036854775808, -9223372036854775808),
        ("1e20+1e19", 0, 0),
        ("1e21+1e19", 0, 0),
        ("1e19+1e19", 0, 0),
        ("3e16+1e16", 40000000000000000, 0),
        ("500m+500m", 1, 1000),
        ("1+500m", 2, 1500),
        ("0.5+0.5", 1, 1000),
        ("1e-30+1", 2, 1001),
        ("100m+1e-10", 1, 101),
        ("1e18+1", 1000000000000000001, 3875820019684213736),
        ("5e15+5e15", 10000000000000000, 0),
        (
            "4611686018427387904+4611686018427387904",
            -9223372036854775808,
            0,
        ),
        (
            "0.0000000000+1e30",
            5076944270305263616,
            4089650035136921600,
        ),
        (
            "1e30+0.0000000000",
            5076944270305263616,
            4089650035136921600,
        ),
        ("1e19+1e-30", -8446744073709551615, 1864712049423024129),
        ("1.5Ei+1", 1729382256910270465, -4611686018427386904),
        ("7.5e-1", 1, 750),
        ("2.5e-10", 1, 1),
    ];
    for &(text, value, milli) in table {
        let mut parts = text.split('+').map(|p| Quantity::parse(p).unwrap());
        let first = parts.next().unwrap();
        let q = parts.fold(first, |sum, q| sum.checked_add(q).unwrap());
        assert_eq!((q.value(), q.milli_value()), (value, milli), "{text}");
    }
}

#[test]
fn display_round_trips_to_the_same_form() {
    for s in [
        "500m",
        "2",
        "1Gi",
        "3n",
        "1.5",
        "1e30",
        "1e40",
        "12345678901234567890",
        "9223372036854775807",
        "0.0000000000",
        "0e-20",
        "1e-30",
        "1.5Ei",
        "16Ei",
        "-1e30",
        "1e2147483647",
    ] {
        let q = Quantity::parse(s).unwrap();
        assert_eq!(Quantity::parse(&q.to_string()), Ok(q), "{s} as {q}");
    }
}

#[test]
fn values_compare_whatever_the_form() {
    let q = |s| Quantity::parse(s).unwrap();
    assert!(q("1e30").cmp_value(q("1e29")).is_gt());
    assert!(q("1000000000000000000").cmp_value(q("1E")).is_eq());
    assert_ne!(q("1000000000000000000"), q("1E"), "the forms differ");
    assert!(q("1.5").cmp_value(q("1501m")).is_lt());
    assert!(q("-1").cmp_value(q("-2")).is_gt());
    assert!(q("0").cmp_value(q("0.0000000000")).is_eq());
    assert!(q("1Ki").cmp_value(q("1k")).is_gt());
}

#[test]
fn exponents_beyond_int32_render_into_zeros_and_parse_back() {
    // The first is a fuzz finding (its exponent's low 32 bits, plus the mantissa's
    // zeros, pass i32::MAX); the others reach past either end the same way.
    let found = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fuzz/regressions/quantity/exponent-beyond-int32"
    ))
    .expect("regression input");
    for text in [
        found.as_str(),
        "1000000000000000000000e2147483647",
        "-123456789012345678901e2147483640",
        "0.000000000000000000001e-2147483648",
        "-0.00000000000000000000000012345e-2147483600",
    ] {
        let quantity = Quantity::parse(text).expect("parses");
        let rendered = quantity.to_string();
        assert_eq!(
            Quantity::parse(&rendered).ok(),
            Some(quantity),
            "{text:?} rendered as {rendered:?}"
        );
    }
}
