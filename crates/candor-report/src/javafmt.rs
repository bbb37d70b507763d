//! Number formatting that reproduces Java's `String.format("%.Nf")` digit for digit, so files
//! meant for Java-world tools (`.hlog`, `.hgrm`) are byte-identical to what Java writes.
//!
//! Java rounds the *shortest* decimal representation of a double half-up, while Rust rounds the
//! exact binary value half-to-even: `1.0005` is "1.001" in Java and "1.000" in Rust.

/// Java's `%.{decimals}f` (no width).
pub fn fixed(x: f64, decimals: usize) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    // `{:e}` prints the shortest round-trip digits, like Java's Double.toString.
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i64 = exp.parse().unwrap_or(0);
    let mut digits: Vec<u8> = mantissa
        .bytes()
        .filter(|b| b.is_ascii_digit())
        .map(|b| b - b'0')
        .collect();
    // Value = 0.d1d2d3... x 10^point
    let mut point = exp + 1;
    let keep = point + decimals as i64;
    if keep < 0 {
        digits.clear();
    } else {
        let keep = keep as usize;
        if keep < digits.len() {
            let round_up = digits[keep] >= 5;
            digits.truncate(keep);
            if round_up {
                let mut i = keep;
                loop {
                    if i == 0 {
                        digits.insert(0, 1);
                        point += 1;
                        break;
                    }
                    i -= 1;
                    if digits[i] == 9 {
                        digits[i] = 0;
                    } else {
                        digits[i] += 1;
                        break;
                    }
                }
            }
        }
    }
    let digit_at = |i: i64| -> char {
        if i >= 0 && (i as usize) < digits.len() {
            (b'0' + digits[i as usize]) as char
        } else {
            '0'
        }
    };
    let mut out = String::new();
    if x.is_sign_negative() && digits.iter().any(|&d| d != 0) {
        out.push('-');
    }
    if point <= 0 {
        out.push('0');
    } else {
        for i in 0..point {
            out.push(digit_at(i));
        }
    }
    if decimals > 0 {
        out.push('.');
        for i in 0..decimals as i64 {
            out.push(digit_at(point + i));
        }
    }
    out
}

/// Java's `%{width}.{decimals}f`: right-aligned in at least `width` characters.
pub fn fixed_w(x: f64, width: usize, decimals: usize) -> String {
    format!("{:>width$}", fixed(x, decimals))
}

#[cfg(test)]
mod tests {
    use super::fixed;

    #[test]
    fn rounds_like_java() {
        assert_eq!(fixed(1.0005, 3), "1.001");
        assert_eq!(fixed(0.0625, 3), "0.063");
        assert_eq!(fixed(2.5, 0), "3");
        assert_eq!(fixed(0.0, 3), "0.000");
        assert_eq!(fixed(999.9996, 3), "1000.000");
        assert_eq!(fixed(0.00049, 3), "0.000");
        assert_eq!(fixed(0.0005, 3), "0.001");
        assert_eq!(fixed(1441812279.474, 3), "1441812279.474");
        assert_eq!(fixed(0.99, 12), "0.990000000000");
        assert_eq!(fixed(1e-7, 12), "0.000000100000");
        assert_eq!(fixed(123456.0, 2), "123456.00");
        assert_eq!(fixed(-1.25, 1), "-1.3");
    }
}
