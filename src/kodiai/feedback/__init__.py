"""kodiai.feedback"""
