"""kodiai.review"""
