"""The membership protocol: session and registration, rebalance plans and attempts, claims, the watchdog."""
