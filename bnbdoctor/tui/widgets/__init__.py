"""Widgets of the app: one module per UI concept."""
