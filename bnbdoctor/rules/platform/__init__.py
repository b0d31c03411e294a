"""Rules about the platform: WSL2's driver folder and Jetson boards."""
