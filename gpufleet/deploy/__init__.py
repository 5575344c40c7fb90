"""The real engine: `pulumi up` / `pulumi preview` through the Automation API, for users with credentials."""
