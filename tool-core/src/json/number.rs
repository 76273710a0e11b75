//! Numbers compared exactly, whatever their JSON form: an `i128` against an `f64` without
//! rounding either.

use std::cmp::Ordering;

use serde_json::Value;

// ---------------------------------------------------------------------------------------------
// Typed checks of `#[arg]` constraints, called by the code `#[tool]` generates.

/// A number, exact for every Rust integer type.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub enum Num {
    /// An integer.
    Int(i128),
    /// A float.
    Float(f64),
}

/// Compares an integer with a float exactly (no rounding of large integers).
fn cmp_int_float(i: i128, f: f64) -> Option<Ordering> {
    if f.is_nan() {
        return None;
    }
    #[allow(clippy::cast_precision_loss)]
    let (lo, hi) = (i128::MIN as f64, i128::MAX as f64);
    if f >= hi {
        return Some(Ordering::Less);
    }
    if f < lo {
        return Some(Ordering::Greater);
    }
    let t = f.trunc();
    #[allow(clippy::cast_possible_truncation)]
    let ti = t as i128;
    Some(i.cmp(&ti).then(if f > t {
        Ordering::Less
    } else if f < t {
        Ordering::Greater
    } else {
        Ordering::Equal
    }))
}

impl Num {
    #[inline]
    pub(crate) fn compare(self, other: Self) -> Option<Ordering> {
        match (self, other) {
            (Self::Int(a), Self::Int(b)) => Some(a.cmp(&b)),
            (Self::Float(a), Self::Float(b)) => a.partial_cmp(&b),
            (Self::Int(a), Self::Float(b)) => cmp_int_float(a, b),
            (Self::Float(a), Self::Int(b)) => cmp_int_float(b, a).map(Ordering::reverse),
        }
    }

    fn from_json(value: &Value) -> Option<Self> {
        let n = value.as_number()?;
        n.as_i64()
            .map(|i| Self::Int(i128::from(i)))
            .or_else(|| n.as_u64().map(|u| Self::Int(i128::from(u))))
            .or_else(|| n.as_f64().map(Self::Float))
    }
}

pub(crate) fn compare_json_numbers(a: &Value, b: &Value) -> Option<Ordering> {
    Num::from_json(a)?.compare(Num::from_json(b)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_number_comparison() {
        let big = i128::from(u64::MAX);
        assert_eq!(
            Num::Int(big).compare(Num::Float(1.8e19)),
            Some(Ordering::Greater)
        );
        assert_eq!(
            Num::Int(10).compare(Num::Float(10.0)),
            Some(Ordering::Equal)
        );
        assert_eq!(Num::Int(10).compare(Num::Float(10.5)), Some(Ordering::Less));
        assert_eq!(Num::Float(-0.5).compare(Num::Int(0)), Some(Ordering::Less));
        assert_eq!(
            Num::Int(9_007_199_254_740_993).compare(Num::Float(9_007_199_254_740_992.0)),
            Some(Ordering::Greater)
        );
    }
}
