"""Runner: N instances, one barrier, a fixed window, per-inference timestamps."""
