"""One module per area of the /v1 API."""
