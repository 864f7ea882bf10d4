"""kodiai.server"""
