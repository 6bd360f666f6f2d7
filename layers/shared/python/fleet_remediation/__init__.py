"""Code shared by the LiveKit Fleet Remediation functions (shipped as a Lambda layer)."""
