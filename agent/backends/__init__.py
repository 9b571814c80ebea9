"""Backends compile, check and profile kernel source for a target (see `base.Backend`)."""
