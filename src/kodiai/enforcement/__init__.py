"""kodiai.enforcement"""
