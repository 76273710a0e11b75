"""The tally every oracle script keeps: each check passes or is reported, and the closing line
says how many of each (the Rust tests read it)."""

failures = []
passed = 0


def check(label, fn):
    """Runs `fn`; any exception is a failure reported under `label`."""
    global passed
    try:
        fn()
        passed += 1
    except Exception as exc:  # noqa: BLE001 - every oracle failure is reported the same way
        failures.append(f"{label}: {type(exc).__name__}: {exc}"[:2000])


def report():
    """Prints the failures and the tally; the exit status."""
    for line in failures:
        print("FAIL", line)
    print(f"{passed} passed, {len(failures)} failed")
    return 1 if failures else 0
