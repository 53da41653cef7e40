"""Sampler names a profile may list (telemetry.samplers), without importing any sampler.

config.py checks a profile against these at load time; registry.SAMPLERS must provide exactly these
(tests/e2e/test_trust.py checks both agree).
"""

SAMPLER_NAMES: tuple[str, ...] = ("host", "ina3221", "jetson_throttle", "jtop", "nvml", "tegrastats")
