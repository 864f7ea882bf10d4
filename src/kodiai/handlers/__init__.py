"""kodiai.handlers"""
