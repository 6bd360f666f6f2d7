"""Development-only code: local stand-ins, harnesses and fakes. Never shipped in a Lambda asset."""
