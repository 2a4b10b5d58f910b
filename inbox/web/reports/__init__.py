"""The reports page of one business over a date range, and its CSV export.

`figures` reads each figure from the audit rows the core writes, `report` puts them together
for the page and the CSV tables, `charts` draws them as SVG, `views` serves both to business
admins. Imports the core (`inbox.conversations`), `inbox.upkeep` and the rest of the web UI only.
"""
