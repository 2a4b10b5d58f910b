"""Bitrix24 CRM sync: the only package that talks to Bitrix24."""
