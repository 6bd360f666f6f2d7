"""Scheduled drill: fakes one fault on one task of staging's fleet, weekly, and tells the verdict."""
