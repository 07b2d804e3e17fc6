app=None
