"""Fakes of cloud APIs on loopback, for the fake_cloud test tier."""
