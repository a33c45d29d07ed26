"""Real-browser tests: JupyterLab in headless Debian Chromium, driven by Playwright."""
