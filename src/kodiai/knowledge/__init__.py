"""kodiai.knowledge"""
