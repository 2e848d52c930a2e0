"""sparring.framework"""
