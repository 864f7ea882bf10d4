"""kodiai.webhook"""
