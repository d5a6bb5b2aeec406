"""consumer"""
