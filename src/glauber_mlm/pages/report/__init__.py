"""Each result page's figures, display tables and prose, one module per page, imported only by its page (so a page's
cache key covers only its own), named for the page's topic.
"""
