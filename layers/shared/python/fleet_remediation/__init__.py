"""Code shared by the LiveKit Fleet Remediation functions (shipped as a Lambda layer)."""

# The release: every report, the stack's description and the packages carry this one version.
__version__ = "0.2.0"
