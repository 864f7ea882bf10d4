"""kodiai.cli"""
