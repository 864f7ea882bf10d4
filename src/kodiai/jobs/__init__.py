"""kodiai.jobs"""
