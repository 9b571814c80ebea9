"""The HTTP API: `create_app(settings)` builds it; routes live in `routes/`, dependencies in `deps.py`."""
