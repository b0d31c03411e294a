"""Screens of the app: the diagnosis (main) screen and the modal dialogs."""
