"""kodiai.execution"""
