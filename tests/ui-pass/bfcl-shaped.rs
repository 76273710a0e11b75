// Compiles with the default lint levels: tools written the way the Berkeley Function Calling
// Leaderboard v4 defines them (names and descriptions from its data, Apache-2.0; see
// tests/fixtures/bfcl/), plain `String`s without bounds, names without a leading verb, and any
// JSON. Heuristic findings warn; none is an error.
use std::collections::HashMap;

use toolsmith::{Toolbox, tool};

/// Calculate the area of a triangle given its base and height.
#[tool(name = "calculate_triangle_area")]
fn calculate_triangle_area(
    /// The base of the triangle.
    base: i64,
    /// The height of the triangle.
    height: i64,
    /// The unit of measure (defaults to 'units' if not specified)
    unit: Option<String>,
) -> String {
    format!("{} {}", base * height / 2, unit.unwrap_or_default())
}

/// Calculate the greatest common divisor of two integers.
#[tool(name = "math.gcd")]
fn gcd(
    /// The first integer.
    num1: i64,
    /// The second integer.
    num2: i64,
) -> i64 {
    num1.min(num2)
}

/// Solve a quadratic equation given coefficients a, b, and c.
#[tool(name = "solve_quadratic_equation")]
fn solve_quadratic_equation(
    /// Coefficient of x^2.
    a: f64,
    /// Coefficient of x.
    b: f64,
    /// Constant term.
    c: f64,
) -> Vec<f64> {
    vec![a, b, c]
}

/// Converts an amount from a currency to another.
#[tool(name = "currency_converter")]
fn currency_converter(
    /// The currency to convert from.
    base_currency: String,
    /// The currency to convert to.
    target_currency: String,
    /// The amount to convert.
    amount: f64,
) -> String {
    format!("{amount} {base_currency} in {target_currency}")
}

/// Calculates the tax for a given income.
#[tool(name = "CalculateTax")]
fn calculate_tax(
    /// The annual income.
    income: f64,
    /// Extra options, any JSON.
    options: Option<HashMap<String, serde_json::Value>>,
) -> f64 {
    let _ = options;
    income * 0.2
}

fn main() {
    let toolbox = Toolbox::new()
        .with(CalculateTriangleArea)
        .with(Gcd)
        .with(SolveQuadraticEquation)
        .with(CurrencyConverter)
        .with(CalculateTax);
    assert_eq!(toolbox.len(), 5);
}
