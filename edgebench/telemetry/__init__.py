"""Telemetry samplers: start() / stop() -> Timeline, on the runner's clock (time.monotonic_ns)."""
