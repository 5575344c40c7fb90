"""The capacity report finance reviews: report.html, report.xlsx and report.md from one planning run.

model.py gathers the figures (pure, unrounded floats); charts.py, html.py, xlsx.py and markdown.py only
present them, so every output shows the same totals (money is rounded only for display).
"""
