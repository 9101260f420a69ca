"""embedding/backends"""
