"""kodiai.storage"""
