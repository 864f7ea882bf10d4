"""kodiai.github"""
