"""kodiai.learning"""
