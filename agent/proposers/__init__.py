"""Proposers: what picks the next kernel variant (see `base.Proposer`)."""
