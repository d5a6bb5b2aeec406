"""podres"""
