"""The operator web console, served under `/console` by the processes that serve HTTP: its
routes (`app`), its cross-cutting checks (`security`), Jinja2 templates and a stylesheet. Pages
read and act through core's services (`core.operator`), never raw SQL."""
