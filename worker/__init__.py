"""sparring.worker"""
