"""sparring.policy"""
