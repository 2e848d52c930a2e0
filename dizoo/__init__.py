"""sparring.dizoo"""
