"""kodiai.text"""
