"""sparring.league"""
