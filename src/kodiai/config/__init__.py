"""kodiai.config"""
