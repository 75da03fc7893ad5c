"""The numbers the figures draw and the report's claims read, one function per quantity, loading no plotting library."""
