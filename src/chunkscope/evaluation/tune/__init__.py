"""evaluation/tune"""
