"""Zombie reaper: deletes LiveKit rooms older than their max age (incident report P0)."""
