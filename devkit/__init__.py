"""Development-only code (fakes, simulators, harness helpers): never shipped in a Lambda asset."""
